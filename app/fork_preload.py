"""The fork server's entry: importing this module loads the workers' tokenizer there.

Python's fork server runs nothing but imports before it forks (its preload is a list of
module names), so this module, named last in `app.worker_start.PRELOAD`, does its work on
import, as a `__main__` does; nothing else imports it. Without `app.shared_tokenizer.ENV`
in the environment it does nothing.
"""

from app.shared_tokenizer import preload_from_environment

preload_from_environment()
