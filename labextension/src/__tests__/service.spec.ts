import { ServerConnection } from '@jupyterlab/services';

import { PromoteRequestError, PromoteService } from '../api/service';

/** A service whose server is a function: the requests it was sent, and its answers. */
function serviceAnswering(answer: (url: string, init: RequestInit) => Response): {
  service: PromoteService;
  sent: { url: string; init: RequestInit }[];
} {
  const sent: { url: string; init: RequestInit }[] = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/lab-base/',
    wsUrl: 'ws://localhost:8888/lab-base/',
    token: '',
    fetch: (async (request: Request) => {
      const init = { method: request.method, body: request.method === 'GET' ? undefined : await request.text() };
      sent.push({ url: request.url.replace(/[?&]\d+$/, ''), init }); // less makeRequest's cache buster
      return answer(request.url, init);
    }) as typeof fetch
  });
  return { service: new PromoteService(settings), sent };
}

describe('PromoteService', () => {
  it('asks for the preview of a kernel and a GPU count only when given', async () => {
    const { service, sent } = serviceAnswering(() => new Response('{"kernel": "python3"}'));
    await service.freeze('nb.ipynb');
    await service.freeze('nb.ipynb', 'torch-2.3', 2);
    await service.freeze('nb.ipynb', undefined, 0);
    await service.freeze('nb.ipynb', undefined, undefined, 'slurm');
    expect(sent.map(s => JSON.parse(String(s.init.body)))).toEqual([
      { notebook: 'nb.ipynb' },
      { notebook: 'nb.ipynb', kernel: 'torch-2.3', gpus: 2 },
      { notebook: 'nb.ipynb', gpus: 0 },
      { notebook: 'nb.ipynb', target: 'slurm' }
    ]);
    expect(sent[0].url).toBe('http://localhost:8888/lab-base/jupyter-promote/freeze');
  });

  it('deletes a finished job with its files, and reads the notification destinations', async () => {
    const { service, sent } = serviceAnswering((url, init) =>
      init.method === 'DELETE'
        ? new Response(null, { status: 204 })
        : new Response(
            JSON.stringify({ destinations: [{ name: 'team', kind: 'slack', on: ['failed'] }], defaults: [] })
          )
    );
    await service.remove('ab12');
    expect(sent[0]).toMatchObject({
      url: 'http://localhost:8888/lab-base/jupyter-promote/jobs/ab12?purge=true',
      init: { method: 'DELETE' }
    });
    expect(await service.notifications()).toEqual({
      destinations: [{ name: 'team', kind: 'slack', on: ['failed'] }],
      defaults: []
    });
    expect(sent[1].url).toBe('http://localhost:8888/lab-base/jupyter-promote/notifications');
  });

  it('refuses to delete a live job as the server does (409)', async () => {
    const { service } = serviceAnswering(
      () => new Response(JSON.stringify({ message: 'job ab12 is running: cancel it first' }), { status: 409 })
    );
    await expect(service.remove('ab12')).rejects.toMatchObject({ status: 409, name: 'PromoteRequestError' });
  });

  it("builds an artifact's address under the server's base URL", () => {
    const { service } = serviceAnswering(() => new Response(''));
    expect(service.artifactUrl('ab12', 'ckpt/model v2.pt')).toBe(
      'http://localhost:8888/lab-base/jupyter-promote/jobs/ab12/artifacts/ckpt/model%20v2.pt'
    );
  });

  it("builds a report's address under the server's base URL", () => {
    const { service } = serviceAnswering(() => new Response(''));
    expect(service.reportUrl('ab12')).toBe('http://localhost:8888/lab-base/jupyter-promote/jobs/ab12/report');
    expect(service.reportUrl('ab12', true)).toBe(
      'http://localhost:8888/lab-base/jupyter-promote/jobs/ab12/report?download=1'
    );
  });

  it("fetches an artifact's bytes", async () => {
    const { service, sent } = serviceAnswering(() => new Response(new Uint8Array([0, 1, 2, 255])));
    const blob = await service.artifact('ab12', 'ckpt/model.pt');
    expect(Array.from(new Uint8Array(await blob.arrayBuffer()))).toEqual([0, 1, 2, 255]);
    expect(sent[0].url).toBe('http://localhost:8888/lab-base/jupyter-promote/jobs/ab12/artifacts/ckpt/model.pt');
  });

  it('turns a refusal into an error naming its subject, for bytes as for JSON', async () => {
    const refuse = () =>
      new Response(JSON.stringify({ message: 'ckpt/x.pt: no such artifact', subject: 'path' }), { status: 404 });
    const { service } = serviceAnswering(refuse);
    const refused = await service.artifact('ab12', 'ckpt/x.pt').catch(e => e);
    expect(refused).toBeInstanceOf(PromoteRequestError);
    expect(refused).toMatchObject({ message: 'ckpt/x.pt: no such artifact', subject: 'path', status: 404 });
    expect(refused.field).toBeNull(); // an older server: no field
    const kernel = serviceAnswering(
      () =>
        new Response(
          JSON.stringify({ message: "kernel 'py39': no such kernelspec", subject: 'py39', field: 'kernel' }),
          { status: 400 }
        )
    );
    await expect(
      kernel.service.submit({ notebook: 'nb.ipynb', target: 'local', kernel: 'py39' })
    ).rejects.toMatchObject({
      subject: 'py39',
      field: 'kernel',
      status: 400
    });
  });

  it('sends replicas, seeds and contention, and reads a group and its summary', async () => {
    const { service, sent } = serviceAnswering(url =>
      url.includes('/sweeps/')
        ? new Response(JSON.stringify({ id: 'g1', kind: 'replicas', size: 2, states: { succeeded: 2 } }))
        : new Response(JSON.stringify({ id: 'a', sweep: 'g1', ids: ['a', 'b'], kind: 'replicas' }), { status: 202 })
    );
    const answer = await service.submit({ notebook: 'nb.ipynb', target: 'local', replicas: 2, seeds: [0] });
    expect(answer).toEqual({ id: 'a', sweep: 'g1', ids: ['a', 'b'], kind: 'replicas' });
    expect(JSON.parse(String(sent[0].init.body))).toEqual({
      notebook: 'nb.ipynb',
      target: 'local',
      replicas: 2,
      seeds: [0]
    });
    expect((await service.sweep('g1')).states).toEqual({ succeeded: 2 });
    expect(sent[1].url).toBe('http://localhost:8888/lab-base/jupyter-promote/sweeps/g1');
  });
});
