# C types of routing/mix.py for the compiled build (setup.py; the .py is the implementation).
cpdef unsigned long long fmix32_int(unsigned long long h)
cpdef unsigned long long fmix32_scalar(unsigned long long x, long long tier)
