"""The designs people draw by hand: published reference architectures by name (:mod:`fabric.reference.presets`)
and the rules a network team follows (:mod:`fabric.reference.rules`: the switch a NIC's generation calls for, the
fat tree at a ratio, the SuperPOD rule), shared by the presets and the search's baselines."""
