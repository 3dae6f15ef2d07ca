"""`make deb`: lintian finds nothing (errors, warnings), and on a fresh Debian root of this
machine's release the package installs with its Depends, runs, and purges leaving no
file behind."""
import os
import re
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
APT = ["apt-get", "-o", "Acquire::Check-Valid-Until=false", "-o", "Dpkg::Use-Pty=0"]
# what changes in any root as packages come and go, whatever they are
VOLATILE = re.compile(r"^/(proc|sys|dev|run|tmp)(/|$)|^/var/(log|cache)/|"
                      r"^/var/lib/dpkg/[^/]*-old$|^/var/lib/apt/|^/etc/ld\.so\.cache$")


def make_deb(ctx):
    r = subprocess.run(["make", "-C", REPO, "--no-print-directory", "OUT=" + ctx.build, "deb"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    deb = r.stdout.strip().splitlines()[-1]
    assert re.search(r"/loopwatch_[0-9][^/]*_amd64\.deb$", deb) and os.path.isfile(deb), deb
    return deb


def host_suite():
    with open("/etc/os-release") as f:
        m = re.search(r"^VERSION_CODENAME=(\w+)$", f.read(), re.M)
    assert m and m.group(1) in ("bookworm", "trixie", "forky"), m and m.group(1)
    return m.group(1)


def test_deb_is_lintian_clean_and_installs_runs_and_purges_on_a_fresh_root(ctx):
    deb = make_deb(ctx)
    r = subprocess.run(["lintian", "--fail-on", "error,warning", deb], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    tags = [ln for ln in r.stdout.splitlines() if re.match(r"^[EW]: ", ln)]
    assert r.returncode == 0 and not tags, r.stdout
    control = subprocess.run(["dpkg-deb", "-f", deb, "Depends", "Version"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
    depends = re.search(r"^Depends: (.*)$", control, re.M).group(1)
    version = re.search(r"^Version: (.*)$", control, re.M).group(1)
    deps = [d.strip().split()[0] for d in depends.split(",")]

    script = os.path.join(REPO, "tools", "testroot.sh")
    r = subprocess.run([script, host_suite()], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=1800)
    assert r.returncode == 0, "tools/testroot.sh: %s" % r.stderr[-2000:]
    # a copy: the cached root stays as fresh as it was built
    root = os.path.join(ctx.build, "roots", ".deb-test")
    subprocess.run(["rm", "-rf", "--one-file-system", root], check=True)
    subprocess.run(["cp", "-a", r.stdout.strip(), root], check=True)
    mounts = []
    try:
        for d in ("proc", "dev"):
            subprocess.run(["mount", "--bind", "/" + d, os.path.join(root, d)], check=True)
            mounts.append(os.path.join(root, d))

        def chroot(*argv, check=True):
            p = subprocess.run(["chroot", root] + list(argv), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=900,
                               env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            assert not check or p.returncode == 0, "%s: %s" % (argv, p.stdout[-3000:])
            return p

        def files():
            out = chroot("find", "/", "-xdev").stdout.splitlines()
            return {p for p in out if not VOLATILE.search(p)}

        # the Depends first, so that what is left after the purge is compared with the
        # root as it was with them and without loopwatch
        chroot(*APT, "update", "-qq")
        chroot(*APT, "install", "-y", "-qq", "--no-install-recommends", *deps)
        before = files()
        shutil.copy(deb, os.path.join(root, "tmp", "loopwatch.deb"))
        chroot("dpkg", "-i", "/tmp/loopwatch.deb")
        out = chroot("loopwatch", "--version").stdout
        assert out.strip() == "loopwatch %s" % version, out
        listed = chroot("dpkg", "-L", "loopwatch").stdout.splitlines()
        assert "/usr/sbin/loopwatch" in listed and \
            "/usr/share/doc/loopwatch/examples/daemonset.yaml" in listed, listed
        chroot("dpkg", "--purge", "loopwatch")
        after = files()
        assert chroot("dpkg-query", "-W", "loopwatch", check=False).returncode != 0
        assert after == before, "left behind: %s; gone: %s" % (
            sorted(after - before)[:20], sorted(before - after)[:20])
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", "-l", m])
        subprocess.run(["rm", "-rf", "--one-file-system", root])
