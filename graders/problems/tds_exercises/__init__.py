"""The problems of source/tds-exercises/: exercises of the Training Dynamics & Scaling module."""
