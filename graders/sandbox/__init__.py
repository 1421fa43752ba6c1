"""The sandbox: the warm zygote and its worker, and the Linux layers a notebook runs under.

`zygote` is the trusted side (start the zygote, run one notebook, read its data back);
`worker` runs as a separate file (``python -I -S``) and imports nothing from this package;
`seccomp` and `cgroups` are loaded by it by file path.
"""
