import { InvalidArgumentError } from '../../errors.js'

/**
 * A Mastra filter pgscale cannot evaluate, or a malformed one (an `InvalidArgumentError`: nothing was
 * sent); `operator` names the operator at fault, if one is. The adapter hands it to Mastra as the
 * cause of a `MastraError` (`…_INVALID_FILTER`).
 */
export class FilterTranslationError extends InvalidArgumentError {
  constructor(
    message: string,
    /** The operator refused (`$regex`), when one is at fault. */
    readonly operator?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}
