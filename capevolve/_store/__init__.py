"""_store"""
