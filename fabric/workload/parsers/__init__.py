"""Trace parsers; each module exposes FORMAT, sniff(head, name) and parse(files)."""
