"""The problems of source/tds-basics/: basics of the Training Dynamics & Scaling module."""
