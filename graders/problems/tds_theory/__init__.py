"""The problems of source/tds-theory/: theory of the Training Dynamics & Scaling module."""
