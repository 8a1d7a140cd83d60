# C types of flowsim/incidence.py for the compiled build (setup.py; the .py is the
# implementation).  Keep in step with incidence.py: every attribute the class sets.
cimport cython

cdef class Incidence:
    cdef public long long nlinks, pool_top, nchanged, cepoch, width, nslots
    cdef public long long[:] lstart, llen, lcap, pool_slot, pool_col, changed, cmark, deg
    cdef public long long[:, :] links, pos
    cdef public double[:, :] coef

    @cython.locals(n=cython.longlong, new=cython.longlong, start=cython.longlong,
                   top=cython.longlong, i=cython.longlong, p=cython.longlong)
    cdef _link_append(self, long long link, long long slot, long long col)
    @cython.locals(start=cython.longlong, last=cython.longlong, p=cython.longlong,
                   s2=cython.longlong, c2=cython.longlong)
    cdef _link_remove(self, long long link, long long slot, long long col)
    @cython.locals(d=cython.Py_ssize_t, c=cython.Py_ssize_t, link=cython.longlong)
    cdef _attach(self, long long slot, long long[:] links, double[:] coefs)
    @cython.locals(c=cython.Py_ssize_t, link=cython.longlong)
    cdef _detach(self, long long slot)
    cdef _mark_changed(self, long long link)
