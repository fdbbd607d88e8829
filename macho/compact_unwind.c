/* SPDX-License-Identifier: MIT */
#include "macho/macho.h"
