"""What tests/ and bench/ both need, in one neutral place: neither imports the other (tests are not a
library for benchmarks, benchmarks are not fixtures), and the shipped packages (app, db, mvp_core) never
import this. Not installed with the wheel (setup.py lists app*, db*, mvp_core* only)."""
