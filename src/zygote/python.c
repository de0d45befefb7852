#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote/zygote.h"

/*
 * The warm interpreter: CPython embedded, configured as /usr/bin/python3
 * (Debian's, with its dist-packages) but ignoring PYTHON* variables, with
 * the template's modules imported up front and the heap frozen out of the
 * garbage collector so forks share it (gc.freeze, CPython 3.7+).
 *
 * _hutch_exec runs one program in a forked child the way `python3 PATH ARGS`
 * would: __main__ module, sys.argv, the script's directory first on
 * sys.path, the uncaught exception printed by sys.excepthook (without our
 * frame), SystemExit codes, non-daemon threads joined and atexit run.
 */

/* kernels/zygote_runner.py, embedded (src/zygote/runner_src.S) */
extern const char hutch_zygote_runner_src[];

static PyObject *exec_fn;
static PyObject *warm_fn;

int hutch_zygote_python_init(const char *preload, char *msg, size_t msg_size)
{
	PyConfig config;
	PyStatus status;
	PyObject *globals;

	PyConfig_InitPythonConfig(&config);
	config.use_environment = 0;
	config.parse_argv = 0;
	config.user_site_directory = 0;
	config.write_bytecode = 0;
	config.install_signal_handlers = 1;
	status = PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3");
	if (!PyStatus_Exception(status))
		status = PyConfig_SetString(&config, &config.executable, L"/usr/bin/python3");
	if (!PyStatus_Exception(status))
		status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status)) {
		snprintf(msg, msg_size, "python init: %s", status.err_msg ? status.err_msg : "?");
		return -1;
	}
	globals = PyDict_New();
	PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
	PyObject *r = PyRun_String(hutch_zygote_runner_src, Py_file_input, globals, globals);
	if (!r) {
		PyErr_Print();
		snprintf(msg, msg_size, "python runner failed to load");
		return -1;
	}
	Py_DECREF(r);
	exec_fn = PyDict_GetItemString(globals, "_hutch_exec");
	Py_XINCREF(exec_fn);
	warm_fn = PyDict_GetItemString(globals, "_hutch_warm");
	Py_XINCREF(warm_fn);
	/* Preload the template's modules; a missing one is skipped, not fatal. */
	char list[1024];
	snprintf(list, sizeof(list), "%s", preload ? preload : "");
	for (char *save = NULL, *m = strtok_r(list, ",", &save); m;
	     m = strtok_r(NULL, ",", &save)) {
		PyObject *mod = PyImport_ImportModule(m);
		if (!mod) {
			PyErr_Clear();
			fprintf(stderr, "hutch-zygote: warn: cannot preload '%s'\n", m);
			continue;
		}
		Py_DECREF(mod);
	}
	/* The warm-up once here too: what it compiles and caches (the code
	 * object, re's pattern cache, lazily made types) is then made once and
	 * shared by every fork, so a child's own warm-up only takes its
	 * copy-on-write faults (5.1 -> 1.5 ms of CPU per cell here). */
	hutch_zygote_python_warm();
	/* Move everything allocated so far out of the GC's reach: a collection
	 * in a child would otherwise touch (and copy) every shared page. */
	r = PyRun_String("import gc; gc.collect(); gc.freeze()", Py_file_input, globals, globals);
	Py_XDECREF(r);
	return exec_fn ? 0 : -1;
}

void hutch_zygote_python_before_fork(void)
{
	PyOS_BeforeFork();
}

void hutch_zygote_python_after_fork(int in_child)
{
	if (in_child)
		PyOS_AfterFork_Child();
	else
		PyOS_AfterFork_Parent();
}

void hutch_zygote_python_warm(void)
{
	PyObject *r = warm_fn ? PyObject_CallNoArgs(warm_fn) : NULL;

	if (!r)
		PyErr_Clear();
	Py_XDECREF(r);
}

static PyObject *str_list(char *const *v)
{
	PyObject *list = PyList_New(0);

	for (size_t i = 0; v && v[i]; i++) {
		PyObject *s = PyUnicode_DecodeFSDefault(v[i]);
		if (!s)
			PyErr_Clear();
		else {
			PyList_Append(list, s);
			Py_DECREF(s);
		}
	}
	return list;
}

int hutch_zygote_python_run(const char *path, char *const *args, char *const *envp)
{
	PyObject *argv = str_list(args);
	PyObject *env = str_list(envp);
	PyObject *res = PyObject_CallFunction(exec_fn, "sOO", path, argv, env);
	int rc = 1;

	Py_DECREF(argv);
	Py_DECREF(env);
	if (res) {
		rc = (int)PyLong_AsLong(res);
		Py_DECREF(res);
	} else {
		PyErr_Print();
	}
	return rc;
}
