"""Journals of an evaluate session (one engine run, named by a random token), so a killed
driver loses only what was in flight and never spends what is not counted.
"""
