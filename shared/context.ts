import type { CounterOutcome } from './counters';
import type { Services } from './services';
import type { Tier } from './tiers';

export interface AuthContext {
  tenantId: string;
  keyId: string;
  tier: Tier;
  email: string;
}

export interface AppEnv {
  Variables: {
    services: Services;
    requestId: string;
    auth?: AuthContext;
    /** This request's api_calls count and the tenant's other counters at that moment. */
    counted?: CounterOutcome;
  };
}

/** What a service verb needs to know about its caller. */
export interface Actor {
  tenantId: string;
  keyId: string | null;
  requestId: string | null;
}
