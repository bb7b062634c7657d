"""Environment variables no TOOL program is ever handed, whatever plait.toml says.

A program's environment is data for the deployer's allowed program, but some variables are read
as code or as options by the loader, the C library, a shell or an interpreter before the program
does anything: `LD_PRELOAD` loads a library into `wc`, `BASH_ENV` runs a command in a bash
wrapper, `PS4` runs one under `set -x`, `TAR_OPTIONS` adds options to `tar`. A graph could set them
through a node's `env`, and a deployer could pass them through from Plait's own environment by
mistake, so both are refused (`plait validate`, `plait config check`, and before a run starts).
The list is kept broad on purpose: refusing a harmless name costs a rename, allowing a harmful one
runs the graph author's code outside what the deployer chose.
"""

from __future__ import annotations

import re

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a variable's name may look like (no `=`, `%`, NUL or spaces: `BASH_FUNC_f%%` is refused)."""

NEVER_PREFIXES = (
    "LD_",  # the dynamic loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT...
    "DYLD_",  # the macOS loader
    "GLIBC_",  # GLIBC_TUNABLES
    "MALLOC_",  # glibc's allocator (MALLOC_CHECK_, MALLOC_PERTURB_...)
    "GCONV_",
    "BASH_",  # BASH_ENV, BASH_FUNC_name%% (exported functions), BASH_XTRACEFD...
    "PYTHON",  # PYTHONSTARTUP, PYTHONPATH, PYTHONHOME, PYTHONINSPECT...
    "PERL",  # PERL5OPT, PERL5LIB, PERLLIB, PERLIO, PERL5DB...
    "RUBY",  # RUBYOPT, RUBYLIB
    "GEM_",
    "BUNDLE_",
    "NODE_",  # NODE_OPTIONS, NODE_PATH, NODE_REPL_EXTERNAL_MODULE
    "NPM_CONFIG_",
    "JAVA_",  # JAVA_TOOL_OPTIONS, JAVA_OPTIONS
    "_JAVA_",
    "JDK_JAVA_",
    "LUA_",  # LUA_INIT runs code
    "PHP",  # PHPRC, PHP_INI_SCAN_DIR
    "R_",  # R_PROFILE, R_ENVIRON
    "TCL",
    "GIT_",  # GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, GIT_CONFIG_*, GIT_EXEC_PATH
    "OPENSSL_",  # OPENSSL_CONF loads engines
    "GREP_",  # GREP_OPTIONS
    "XZ_",  # XZ_OPT, XZ_DEFAULTS
    "ZSTD_",
)
"""Families of variables that carry code, libraries or options (compared without case)."""

NEVER_NAMES = frozenset(
    {
        # shells
        "ENV",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "SHELLOPTS",
        "BASHOPTS",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "ZDOTDIR",
        "FPATH",
        "HISTFILE",
        "MAIL",
        "MAILPATH",
        # the C library
        "LOCPATH",
        "NLSPATH",
        "HOSTALIASES",
        "RES_OPTIONS",
        "LOCALDOMAIN",
        "GETCONF_DIR",
        "TZDIR",
        # programs that run other programs or read options from the environment
        "SHELL",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "MANOPT",
        "BROWSER",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "TAR_OPTIONS",
        "GZIP",
        "BZIP",
        "BZIP2",
        "EXINIT",
        "VIMINIT",
        "MYVIMRC",
        "CLASSPATH",
        "SSLKEYLOGFILE",
        "TERMINFO",
        "TERMINFO_DIRS",
        "WGETRC",
        "CURL_HOME",
        "MAGIC",
        "LESSOPEN",
        "LESSCLOSE",
        "LESSEDIT",
        "LESSKEY",
    }
)
"""Single variables that carry code, libraries, options or files read as configuration."""


def unsafe_variable(name: str) -> str | None:
    """Why `name` may never be set for a program (None: it may, where the deployer allows it)."""
    if not NAME.match(name):
        return f"{name!r} is not a variable name (letters, digits and _ only)"
    upper = name.upper()
    if upper in NEVER_NAMES or upper.startswith(NEVER_PREFIXES):
        return (
            f"{name} is read by the loader, a shell or an interpreter as code, a library or options, "
            "so no program is ever given it"
        )
    return None
