"""Op specs: validation, shape/dtype inference and backward rules, one file per family."""
