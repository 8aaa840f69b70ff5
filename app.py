"""fabric dashboard: entry point. Sets up the session's state (from the link, if any), the pages, and keeps the
URL in step with the view so a link reproduces it. Every page reads input, calls fabric, and draws."""

# Streamlit runs this file as __main__. Search worker processes are spawned (multiprocessing "spawn"), and a spawned
# process imports the parent's main module under the name __mp_main__: there it must neither draw a dashboard
# (without a browser session) nor import Streamlit (half a second of every worker's start, while the first front
# waits for it). So the dashboard lives in pages/_entry.py and runs only under __main__.
if __name__ == "__main__":
    from pages._entry import main

    main()
