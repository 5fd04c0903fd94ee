"""A Debian source package, fetched for a benchmark without touching the
system's apt configuration: bench/real_compiler.py (tcc) and
bench/real_database.py (postgresql-15) build real programs from it."""

import glob
import os
import shutil
import subprocess
import sys

SOURCES = "deb-src http://deb.debian.org/debian bookworm main\n"


def progress(who):
    """say(text): a line of progress on stderr, "who: text"."""
    def say(text):
        sys.stderr.write("%s: %s\n" % (who, text))
        sys.stderr.flush()
    return say


def run_quietly(argv, cwd=None, what=None, who="bench"):
    """Runs argv quietly; on failure stops with the end of its output."""
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise SystemExit("%s: %s failed (exit %d):\n%s"
                         % (who, what or " ".join(argv), proc.returncode,
                            proc.stdout[-3000:]))
    return proc.stdout


def fetch(tmp, package, is_tree, say, who="bench"):
    """apt-get source --download-only PACKAGE with a private sources
    list, lists and cache under tmp (removed after), its .orig tarball
    unpacked into tmp/PACKAGE-source. is_tree(path) tells the tree's top
    (a tarball with or without a top-level directory). Returns (tree,
    "PACKAGE VERSION")."""
    apt = os.path.join(tmp, "apt")
    for d in ("lists/partial", "cache/archives/partial", "download"):
        os.makedirs(os.path.join(apt, d))
    srclist = os.path.join(apt, "src.list")
    with open(srclist, "w") as f:
        f.write(SOURCES)
    opts = ["-o", "Dir::Etc::sourcelist=" + srclist,
            "-o", "Dir::Etc::sourceparts=-",
            "-o", "Dir::State::Lists=" + os.path.join(apt, "lists"),
            "-o", "Dir::Cache=" + os.path.join(apt, "cache"),
            # the private directories are root's (mkdtemp's 0700), which
            # apt's _apt download user cannot enter
            "-o", "APT::Sandbox::User=root"]
    say("apt-get update (private lists: %s)" % SOURCES.strip())
    run_quietly(["apt-get", "-q"] + opts + ["update"], what="apt-get update",
                who=who)
    say("apt-get source --download-only %s" % package)
    run_quietly(["apt-get", "-q"] + opts + ["source", "--download-only",
                                            package],
                cwd=os.path.join(apt, "download"),
                what="apt-get source --download-only %s" % package, who=who)
    tars = glob.glob(os.path.join(apt, "download", "*.orig.tar.*"))
    if len(tars) != 1:
        raise SystemExit("%s: expected one .orig.tar in %s, found %s"
                         % (who, apt, tars))
    tree = os.path.join(tmp, package + "-source")
    os.makedirs(tree)
    run_quietly(["tar", "-xf", tars[0], "-C", tree],
                what="tar -xf " + tars[0], who=who)
    if not is_tree(tree):
        subdirs = [d for d in glob.glob(os.path.join(tree, "*"))
                   if os.path.isdir(d)]
        if len(subdirs) == 1 and is_tree(subdirs[0]):
            tree = subdirs[0]
    version = os.path.basename(tars[0]).split(".orig.tar")[0]
    shutil.rmtree(apt)
    return tree, version.replace("_", " ")
