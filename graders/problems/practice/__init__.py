"""The problems of source/practice/: practice of chapter II.8."""
