"""Code several problems share (floating-point formats, schedules, loss scaling, clipping,
noise scale): written once here, never imported from another problem."""
