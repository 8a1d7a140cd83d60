"""Experiments: many runs of a scenario, planned, run and tabulated (layer 8).

* ``engines`` (the engine registry: each engine's builder and what it can run), ``runner``
  (the one pipeline: ``build``, ``run``), ``budget`` / ``budget_counts`` (the run budget);
* ``plan``: the one planner, every run as a :class:`~fabricsim.experiments.plan.RunSpec`
  (sweep grids, compare's methods x seeds, the ARK study's policies x QPS x seeds);
* ``backend`` (local worker processes or a Dask cluster) and ``runs`` (tasks on a backend,
  Ctrl-C and SIGTERM handled);
* ``methods`` and ``compare`` (``fabricsim compare``), ``study`` (the ARK study) and
  ``default_study`` (its choices as the default ``fabricsim run``), ``sweep`` and
  ``sweep_store`` (``fabricsim sweep``).

Experiments write data only; their figures are :mod:`fabricsim.report.plots`, drawn through a
callback the command line passes in.
"""
