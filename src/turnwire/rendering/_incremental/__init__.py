"""The warm path: what a long-lived renderer keeps between renders, and how it tells that a
kept value is still what the cold rules would give.
"""
