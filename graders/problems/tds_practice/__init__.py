"""The problems of source/tds-practice/: practice of the Training Dynamics & Scaling module."""
