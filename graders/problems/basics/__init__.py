"""The problems of source/basics/: basics of chapter II.8."""
