"""The sandbox: the warm zygote and its worker, and the Linux layers a notebook runs under.

`zygote` is the trusted side (start the zygote, run one notebook, read its data back);
`protocol` writes down what passes between them (the zygote's `SandboxConfig`, the monitor's
messages). `worker` runs as a separate file (``python -I -S``) and imports nothing from this
package: it loads `linux`, `layers`, `monitor`, `cells` and `protocol` beside it by file path, and
`layers` loads `seccomp` and `cgroups` the same way. `tempdirs` keeps the private folders whose
owner is recorded, so that a killed owner's are swept.
"""
