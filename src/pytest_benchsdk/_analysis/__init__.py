"""The analyses, pure: samples and their statistics (``stats``, on the one percentile rule of
:mod:`pytest_benchsdk._base.percentiles`), upstream's scoring math (``scoring``), the one
resampling engine (``resampling``: every random draw and every bootstrap interval), comparisons
(``compare``, ``uncertainty``), run hygiene (``hygiene``, ``kendall``), change points
(``changepoints``) and the baseline comparison (``baseline/``: the noise, the comparison, A/B
pairing and the compare-fail rules, a module each). Public homes:
:mod:`pytest_benchsdk.scoring` and :mod:`pytest_benchsdk.compare`."""
