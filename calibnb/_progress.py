"""The progress bar of long loops (data downloads, training epochs, the post-hoc study)."""


def progress_bar():
    """tqdm's notebook bar where Jupyter widgets are installed, else its text bar.

    ``tqdm.auto`` falls back to the text bar by itself, but warns (with the path of the
    environment) when ipywidgets is missing; this picks the text bar without the warning.
    """
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        from tqdm import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm
