"""`kvcli calibrate --gpu`: the micro-benchmarks (`micro.py`, torch + kernels) and the run that
measures, fits and builds the calibration file (`run.py`). Imported only by that command."""
