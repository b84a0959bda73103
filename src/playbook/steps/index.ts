// The typed step library playbooks are written in.
import type { StepDefinition } from '../stepTypes.js';
import { checkWrites, compact, defrag, disarmAlarm, packDataDirStep, unpackDataDirStep } from './maintenanceSteps.js';
import { checkClusterStep, waitHealthyStep } from './healthSteps.js';
import { addLearner, promote, waitCaughtUpStep } from './learnerSteps.js';
import { removeMember, updatePeerUrls } from './membershipSteps.js';
import { DEBIAN_ETCD_STEPS } from './debianEtcdSteps.js';
import { KUBE_STEPS } from './kubeSteps.js';
import { migrateStep } from './migrateSteps.js';
import { fenceOldDataDirs, fenceOldMembers, inspectSources, restore, verifySnapshot } from './sourceSteps.js';
import { startMember, stopMember } from './startStopSteps.js';
import { applyRevisionBump, materializeBackup } from './backupSourceSteps.js';

export const STEP_LIBRARY: Record<string, StepDefinition> = Object.fromEntries(
  [
    materializeBackup,
    applyRevisionBump,
    inspectSources,
    fenceOldMembers,
    fenceOldDataDirs,
    verifySnapshot,
    restore,
    startMember,
    stopMember,
    waitHealthyStep,
    addLearner,
    waitCaughtUpStep,
    promote,
    removeMember,
    updatePeerUrls,
    checkClusterStep,
    compact,
    defrag,
    disarmAlarm,
    checkWrites,
    packDataDirStep,
    unpackDataDirStep,
    migrateStep,
    ...KUBE_STEPS,
    ...DEBIAN_ETCD_STEPS,
  ].map((s) => [s.type, s]),
);
