"""The analyses, pure: samples and their statistics (``stats``), upstream's scoring math
(``scoring``), comparisons and their intervals (``compare``, ``uncertainty``), run hygiene
(``hygiene``, ``kendall``), change points and the baseline comparison (``baseline``). Public
homes: :mod:`pytest_benchsdk.scoring` and :mod:`pytest_benchsdk.compare`."""
