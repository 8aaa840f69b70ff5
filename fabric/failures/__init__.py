"""Failures: which single failures count and what surviving one means (:mod:`fabric.failures.rule`), what they do
to an evaluated job (:mod:`fabric.failures.resilience`) and the words every view uses for them
(:mod:`fabric.failures.text`)."""
