/* ecc_board.h: what every edgecc board-support file provides to the harness.
 * targets.build adds this folder to the include path of every image. */
#ifndef ECC_BOARD_H
#define ECC_BOARD_H
#include <stdint.h>

/* Index of the op currently running, or -1 outside the model. Board support defines it weak
 * (initialised to -1); the harness sets it before each op so a fault report can name the op
 * ("FAULT: ... OP=<n>"). Volatile so the store is not sunk past the op that faults. */
extern volatile int32_t ecc_current_op;

#endif
