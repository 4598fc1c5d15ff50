"""One trial of an experiment, as phases (each a function of the running trial, ``Running``):
``servers`` (start, stop), ``rtt``, ``load``, ``clients``, ``start`` (the barrier and the
skew check), ``faults``, ``summarize`` (fetch, summary, consistency check); ``run`` strings
them together. The experiment's loop over points, systems and trials is k2bench/orchestrator.py.
"""
from .run import run_trial
from .state import Running, Trial

__all__ = ["Running", "Trial", "run_trial"]
