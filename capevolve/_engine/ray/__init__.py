"""_engine/ray"""
