"""_store/rollouts"""
