"""The course tooling: chapters and contracts, the build, the gate, status, site, demo, report.

It sits on top of the engine and the problem library; nothing below imports it.
"""
