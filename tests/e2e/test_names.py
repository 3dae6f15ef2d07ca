"""Processes named as the user knows them: the name it was started as, beside the file
a symlink led to (Debian's redis-server is a symlink to redis-check-rdb)."""
import os
import shutil
import tempfile

from lwtest import load_truth, run_traced, tmpfile


def test_report_names_a_symlinked_program_as_it_was_started(ctx):
    """stallwork started through a symlink named myservice: the report's heading says
    myservice (its comm), then "Started as" the symlink's path, running the real file."""
    d = tempfile.mkdtemp(prefix="loopwatch-names-")
    try:
        link = os.path.join(d, "myservice")
        os.symlink(os.path.realpath(ctx.workload("stallwork")), link)
        out, report = tmpfile(), tmpfile(".md")
        pid, _ = run_traced(ctx, [link, out, "cpu", "40", "--go"], "--report", report)
        load_truth(out)
        with open(report) as f:
            text = f.read()
        os.unlink(report)
    finally:
        shutil.rmtree(d)
    assert "## myservice (pid %d)" % pid in text, text[:800]
    assert "Started as `%s`, running `%s`" % (link, os.path.realpath(
        ctx.workload("stallwork"))) in text, text[:800]
