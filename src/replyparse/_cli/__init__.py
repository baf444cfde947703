"""The command line's subcommands (private: the public entry point is :mod:`replyparse.cli`).

One module per command, plus what they share (``common``) and the progress bar; none of
them imports the server's dependencies (``serve_cmd`` does so only when run).
"""
