"""ansible-test's pip bootstrap without its download: pip from the interpreter's own ``ensurepip``, then
``pip install`` of what ansible-test asks for (the pinned pip, and setuptools and wheel unless told not
to), from the registry the machine's pip is set up for.

ansible-test makes each sanity test's virtual environment without pip and runs its bootstrap script
(``get-pip.py``, fetched from Ansible's CI file server unless ``~/.ansible/test/cache`` holds one) with
pip's install arguments. That server is not reachable from these machines; tests/ansible/test_sanity.py
puts this script in its place, in a home of the tests' own.
"""

import ensurepip
import os
import subprocess
import sys

# get-pip.py's own options, which pip install does not know: it leaves those packages out.
OWN_OPTIONS = {"--no-setuptools", "--no-wheel"}

if __name__ == "__main__":
    # ensurepip drops pip's configuration and PIP_* variables from this process's environment (it installs
    # from its bundled wheels); the install after it needs them: the machine's CA, its index.
    environment = dict(os.environ)
    ensurepip.bootstrap(upgrade=True)
    arguments = [arg for arg in sys.argv[1:] if arg not in OWN_OPTIONS]
    sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *arguments], env=environment))
