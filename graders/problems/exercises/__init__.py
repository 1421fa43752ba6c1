"""The problems of source/exercises/: exercises of chapter II.8."""
