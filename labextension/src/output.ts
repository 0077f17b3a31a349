/** Where "Open output" puts a job's output notebook: beside its source notebook, never over a file. */

/**
 * The first free name among `STEM.promote-ID.ipynb`, `STEM.promote-ID-2.ipynb`, ... for a notebook path.
 *
 * @param notebookPath the source notebook, relative to the server's root
 * @param jobId the job's id (its first 8 characters name the copy)
 * @param exists whether a path is taken (the contents API)
 */
export async function outputCopyPath(
  notebookPath: string,
  jobId: string,
  exists: (path: string) => Promise<boolean>
): Promise<string> {
  const stem = `${notebookPath.replace(/\.ipynb$/, '')}.promote-${jobId.slice(0, 8)}`;
  for (let n = 1; ; n++) {
    const path = n === 1 ? `${stem}.ipynb` : `${stem}-${n}.ipynb`;
    if (!(await exists(path))) {
      return path;
    }
  }
}
