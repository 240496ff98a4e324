"""Print pip's configured package sources here (pip.conf files and PIP_* variables: indexes, find-links
folders, constraint files) as `uv pip install` flags, one shell word per line. uv reads no pip configuration,
and scripts/setup_env.sh must install what pip would on the same machine."""
import os
import subprocess
import sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}

listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
seen = set()
for line in listing.splitlines():          # e.g. global.find-links='/opt/wheels', :env:.constraint='a b'
    key, _, value = line.partition("=")
    flag = FLAGS.get(key.rsplit(".", 1)[-1])
    for item in value.strip().strip("'\"").split() if flag else ():
        # pip passes over a find-links folder that is not there; uv would stop on it
        missing = flag == "--find-links" and "://" not in item and not os.path.exists(item)
        if (flag, item) not in seen and not missing:
            seen.add((flag, item))
            print(flag)
            print(item)
