"""k2bench analysis: runs into tidy pandas frames (``load``), one function per figure
(``figures``), the paper's reference numbers (``paper``), and the headless report behind
``make analyze`` (``report``) that executes the notebooks in ``analysis/notebooks``."""
