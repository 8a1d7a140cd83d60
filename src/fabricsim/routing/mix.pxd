# C types of routing/mix.py for the compiled build (setup.py; the .py is the implementation).
cimport cython
cpdef unsigned long long fmix32_int(unsigned long long h)
cpdef unsigned long long fmix32_scalar(unsigned long long x, long long tier)
@cython.locals(crc=cython.ulonglong, qp=cython.longlong)
cpdef unsigned long long header_key(unsigned long long base, list port_crcs, list qp_crcs,
                                    long long entropy)
