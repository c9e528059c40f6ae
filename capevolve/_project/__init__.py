"""_project"""
