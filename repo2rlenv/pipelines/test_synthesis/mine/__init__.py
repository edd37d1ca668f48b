"""Mining: where broken/fixed pairs come from (libcst mutations of a function, real commits that changed
source but no test, or both) before any of them is run."""
