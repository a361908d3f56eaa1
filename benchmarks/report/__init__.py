"""The report's generated blocks, one module per report page (``TABLES``: block name -> the function that
writes it); ``benchmarks/readme_tables.py`` writes and checks them."""
