"""The observation reconciler of slots (Node.status): see observer.py."""
