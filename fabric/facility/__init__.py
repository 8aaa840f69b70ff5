"""The facility a design occupies: racks, where every watt sits, IT and facility power and cables by reach
(:mod:`fabric.facility.rackpower`)."""
