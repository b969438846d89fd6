"""Veyru: a failing living crystal, an observer who sees it and an engineer who knows the cure."""
