"""The problems of source/tds-worked/: worked problems of the Training Dynamics & Scaling module."""
