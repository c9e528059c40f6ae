"""_loop"""
