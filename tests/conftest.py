# The op-table modules are data for the tests, not tests: keep --doctest-modules from importing
# them a second time (which would append every row to the table again).
collect_ignore = ["op_table.py", "op_table_linalg.py"]
