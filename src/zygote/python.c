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

static const char runner_source[] =
	"import atexit, builtins, os, sys, types\n"
	"def _exit_code(e):\n"
	"    c = e.code\n"
	"    if c is None:\n"
	"        return 0\n"
	"    if isinstance(c, int):\n"
	"        return c & 0xff\n"
	"    try:\n"
	"        print(c, file=sys.stderr)\n"
	"    except Exception:\n"
	"        pass\n"
	"    return 1\n"
	"def _hutch_exec(path, argv, env):\n"
	"    os.environ.clear()\n"
	"    for kv in env:\n"
	"        k, _, v = kv.partition('=')\n"
	"        os.environ[k] = v\n"
	"    sys.argv = [path] + list(argv)\n"
	"    sys.path.insert(0, os.path.dirname(path))\n"
	"    # Forks share the zygote's RNG state: reseed from the kernel.\n"
	"    import random\n"
	"    random.seed()\n"
	"    npr = sys.modules.get('numpy.random')\n"
	"    if npr is not None:\n"
	"        npr.seed()\n"
	"    main = types.ModuleType('__main__')\n"
	"    main.__file__ = path\n"
	"    main.__builtins__ = builtins\n"
	"    sys.modules['__main__'] = main\n"
	"    rc = 0\n"
	"    try:\n"
	"        with open(path, 'rb') as f:\n"
	"            src = f.read()\n"
	"        exec(compile(src, path, 'exec'), main.__dict__)\n"
	"    except SystemExit as e:\n"
	"        rc = _exit_code(e)\n"
	"    except BaseException as e:\n"
	"        # drop our own frame: the report reads as python3's would\n"
	"        tb = e.__traceback__.tb_next if e.__traceback__ else None\n"
	"        sys.excepthook(type(e), e.with_traceback(tb), tb)\n"
	"        rc = 130 if isinstance(e, KeyboardInterrupt) else 1\n"
	"    try:\n"
	"        t = sys.modules.get('threading')\n"
	"        if t is not None:\n"
	"            t._shutdown()\n"
	"        atexit._run_exitfuncs()\n"
	"    except SystemExit as e:\n"
	"        rc = _exit_code(e)\n"
	"    except BaseException:\n"
	"        pass\n"
	"    for s in (sys.stdout, sys.stderr):\n"
	"        try:\n"
	"            s.flush()\n"
	"        except Exception:\n"
	"            pass\n"
	"    return rc\n"
	"def _hutch_warm():\n"
	"    # At pool time, in a fresh child: touch what a run touches (the\n"
	"    # compiler, exec, common builtins and modules), so the copy-on-write\n"
	"    # faults happen now, in the background, not on the request's path.\n"
	"    import json, random, re\n"
	"    ns = {'__name__': '__warm__', '__builtins__': builtins}\n"
	"    src = 'x = [i * 2 for i in range(50)]\\ny = sum(x)\\nz = str(y) + repr(x[:3])\\n'\n"
	"    exec(compile(src, '/workspace/main.py', 'exec'), ns)\n"
	"    json.dumps({'a': [1, 2.5, 'x']}); re.compile('a+b').findall('aab')\n"
	"    random.random(); types.ModuleType('__warm__'); os.environ.get('PATH')\n"
	"    sys.stdout.write(''); sys.stderr.write('')\n";

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
	PyObject *r = PyRun_String(runner_source, Py_file_input, globals, globals);
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
