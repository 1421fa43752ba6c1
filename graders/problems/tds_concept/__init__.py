"""The problems of source/tds-concept/: concept of the Training Dynamics & Scaling module."""
