/**
 * The routes' request validators, compiled when first needed instead of before the API serves.
 * Fastify compiles every route's schemas with Ajv while the app is built: some 600 ms of a start
 * on these machines, more than everything else a small data folder costs (issue 27: a restart
 * of a small folder well under a second). Here each validator is Fastify's own (the same Ajv
 * compiler, options and shared schemas), compiled at its route's first request, and the ones
 * not used yet are compiled in the background once the API serves (warm()), a slice per turn
 * of the event loop, so requests are never held behind them for long. The answers are the same:
 * only when the compiling happens changes. A schema Ajv refuses fails the route's requests
 * (and the warm-up logs it); the OpenAPI and route tests compile every schema.
 *
 * Fastify treats a compiler given this way as a custom one, which only changes how it passes
 * header schemas (not lowercased first): the routes have none.
 */
import type AjvCompiler from '@fastify/ajv-compiler';

type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type BuildValidator = ReturnType<typeof AjvCompiler>;
type RequiredCompiler = { default: typeof AjvCompiler };
type RouteSchema = Parameters<ReturnType<BuildValidator>>[0];

export class LazyValidators {
  /** validators not compiled yet, in the order their routes were added */
  private readonly waiting = new Set<() => void>();
  private stopped = false;
  /**
   * Fastify's own pool of Ajv compilers, one per set of shared schemas and options; loaded with
   * Ajv at the first compile (loading them cost a start ~80 ms).
   */
  private poolOnce?: BuildValidator;
  private get pool(): BuildValidator {
    return (this.poolOnce ??= (require('@fastify/ajv-compiler') as RequiredCompiler).default());
  }

  /** Fastify's `schemaController.compilersFactory.buildValidator`. */
  readonly buildValidator = (externalSchemas: unknown, options: unknown) => {
    let compiler: ReturnType<BuildValidator> | undefined;
    return (route: RouteSchema): Validate => {
      let compiled: Validate | undefined;
      const compile = () => {
        this.waiting.delete(compile);
        compiler ??= this.pool(externalSchemas as never, options as never);
        compiled = compiler(route) as Validate;
        return compiled;
      };
      this.waiting.add(compile);
      const validate: Validate = (data) => {
        const v = compiled ?? compile();
        const ok = v(data);
        // Fastify reads the errors from the function it was given.
        validate.errors = v.errors;
        return ok;
      };
      return validate;
    };
  };

  /** Validators not compiled yet. */
  get pending(): number {
    return this.waiting.size;
  }

  /**
   * Compile the validators no request needed yet, `slice` at a time with the event loop free
   * between slices, starting `afterMs` from now (a start's first answers do not share the CPU
   * with them); resolves when none is left or stop() was called. `failed` hears of a schema
   * that does not compile.
   */
  async warm(failed: (err: Error) => void, slice = 4, afterMs = 0): Promise<void> {
    // The wait keeps no process alive: one that has nothing else to do has nothing to warm for.
    if (afterMs > 0) await new Promise((r) => setTimeout(r, afterMs).unref());
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (this.stopped || !this.waiting.size) return;
      let n = 0;
      for (const compile of this.waiting) {
        if (n++ === slice) break;
        try {
          compile();
        } catch (err) {
          failed(err as Error);
        }
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }
}
